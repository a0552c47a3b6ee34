//! Lossy dictionary compression of visibility maps, the CPU reference of
//! `vulkan-shaders/gi_compress_{match,append}.comp`.
//!
//! Following the DDGI design's dictionary compression (`docs/gpu.md`): maps are visited in a given order; each quadrant is
//! compared with the blocks already stored within a look-back window (40,000
//! quadrant blocks: the reference's 10,000 blocks are whole 16 x 16 maps, and a
//! window reaching as many texels back holds four times as many quadrants) and
//! reuses the most recent one whose largest texel difference, in either
//! channel, is at most the tolerance (0.01 of the clip range: maps are normalised,
//! so the tolerance is absolute); otherwise it is stored as a new block of 64
//! texels (96 B, see below; stored without its clip texels, in 7 to 11 bits a
//! texel by the width of its spread codes, `table.rs`). A quadrant within tolerance of the clip value stores nothing and
//! decodes to the clip value; a probe whose four quadrants are so is a dead probe.
//!
//! # Block texels in 11 bits
//!
//! Beyond the reference, a block stores each texel in 11 bits, not as the maps'
//! two half floats: the depth (over the clip distance) in 7-bit unorm, and the
//! *spread* `depth^2 - d * d` over the decoded depth `d` in 4 bits, 15 steps of
//! 1/60 on [0, 1/4] (the variance of values in [0, 1] is at most 1/4). A texel
//! decodes to `[d, min(d * d + spread, 1)]`, within 1/254 of the depth and 1/120
//! of the depth^2 for every texel a map holds: inside the tolerance, 0.01 of the
//! clip range. (A mean of squares is at least the square of the mean, so a map's
//! depth^2 is at least its depth squared; where the decoded depth lies above the
//! depth, so that the spread clamps at 0, the depth^2 is off by at most
//! `2 * (1/254) + (1/254)^2`, 0.0079.) Quadrants are compared with a stored block
//! as it decodes, so every texel of every map that reuses it still decodes within
//! the tolerance; a texel at the clip value decodes to exactly `[1, 1]`. The compressor keeps a depth
//! code per byte ([`Block`]); the stored tables pack them 7 bits each and leave the
//! clip texels out (`table.rs`).
//!
//! 7-bit depth, against 8-bit: on smooth terrain at 0.5 m spacing the dictionary
//! holds 36,160 blocks instead of 34,981 (a coarser code leaves less of the
//! tolerance for matching), of 8 bytes less each: 5.09% -> 4.78% of raw (swizzled
//! order, `cargo bench -p kiln-benches --bench ddgi -- nothing_matches`); the
//! hills at 1.0 m 2,926 blocks instead of 2,918, 5.34% -> 4.96%. 6 bits would
//! break the tolerance where the spread clamps (2/126 of depth^2).
//!
//! Measured on the voxel hills at 1.0 m spacing (`cargo bench -p kiln-benches
//! --bench ddgi`): 8-bit depth and depth^2 stored 2,924 blocks of 128 B, 8-bit
//! depth with the 4-bit spread 2,918 of 96 B; 6-bit depth and depth^2 (96 B, but a
//! depth error of 1/126) 2,933. A quarter off the dictionary for no more blocks. On
//! those maps the spread is 0 at the median texel, under 0.0004 at the 90th
//! percentile and 1/4 (the most there is) at the 99th.
//!
//! # Quadrants and symmetries
//!
//! Beyond the reference, the unit stored is a quadrant of a map (8 x 8 texels, a
//! 96-byte block), not the whole map: a probe has four entries (its signature,
//! below), one per quadrant, and a quadrant that sees nothing is dead on its own.
//! Each quadrant is read in its own frame ([`quadrant_texel`]), counted from the
//! map's centre (the +y pole) outward, and may match a block as is or transposed.
//! With the octahedral poles on the vertical, those two cover the eight symmetries
//! of the square ([`symmetric_texel`]): the quarter turns about the vertical and
//! the mirrors in vertical planes. So the corner of a building seen from the
//! north-east and from the south-west, a slope facing east and one facing north,
//! or the flat ground under every probe share blocks. Decoding is still a lookup:
//! texel `(x, y)` of probe `p` is place `i` of quadrant `q`, read from texel `i`,
//! or its transpose, of the block that the probe's entry `q` names
//! ([`CompressedVisibility::entry`], below).
//!
//! # Dead probes and signatures
//!
//! A dead probe stores one bit: [`CompressedVisibility::live`] has a bit per probe
//! with per-word ranks ([`RankedBits`]), and only live probes have entries. A live
//! probe's four entries (per quadrant, its block and transpose bit, or dead) are
//! its *signature*, and probes over the same flat ground or along the same
//! straight wall share one: the town at 0.5 m spacing has 55,146 live probes and
//! 5,838 distinct signatures. So [`ProbeIndex`] stores each distinct signature
//! once, in first use, and per live probe its signature's number, in the fewest
//! bits that number them all; where that would store more (the smooth terrain at
//! 1.0 m: 4,029 signatures among 4,060 live probes), each live probe keeps its
//! own signature at its rank and no numbers are stored. An entry is
//! `2 * block + transpose bit` in the fewest bits that hold every block's and
//! leave all ones for a dead quadrant ([`PackedInts`]: 13 to 16 bits on the
//! scenes measured). Decoding reads the rank, the number (when stored) and the
//! entry: three loads, on the CPU and on the GPU (`gi_block_entry`).
//!
//! Before, each live probe stored four 2-byte block numbers (4-byte past 65,535
//! blocks) and four transpose bits, 8.5 bytes. Visibility against raw, swizzled
//! order, and bytes per probe placed, all data included (`cargo bench -p
//! kiln-benches --bench ddgi -- nothing_matches`): the town at 0.5 m 0.57% ->
//! 0.28%, 22.1 -> 19.2 B; at 1.0 m 2.51% -> 2.01%, 42.1 -> 37.0 B; the hills at
//! 0.5 m 0.42% -> 0.33%, at 1.0 m 2.72% -> 2.43%, 44.9 -> 41.9 B; the smooth
//! terrain, whose probes share few signatures, 8.48% -> 8.38% at 1.0 m (narrower
//! entries only) and 1.95% -> 1.94% at 0.5 m.
//!
//! Against whole-map blocks matched through the eight symmetries, quadrants store
//! 2.3% instead of 3.3% of the raw maps on the 48 m town at 0.5 m spacing and 8.9%
//! instead of 25.6% at 1.0 m (swizzled order; `cargo bench -p kiln-benches --bench
//! ddgi`). Trying all eight symmetries of a quadrant's own square as well stores
//! 1-3% fewer blocks for twice the time: not kept.
//!
//! # Search
//!
//! A block can only match a quadrant whose mean depths (of the whole quadrant,
//! and of its 4 x 4 texels nearest the pole, both kept by a transpose) are within
//! the tolerance of its own. The GPU scans the window and tests both means first;
//! this reference finds the same blocks, newest first, through cells of the whole
//! mean (`MeanCells`), and compares against unpacked copies of the blocks: 0.38 s
//! for the 80,670 maps of the hills at 0.5 m, against 0.98 s scanning the window.
//!
//! # Batches
//!
//! The GPU compresses a batch of maps per dispatch, so maps of one batch cannot
//! match each other, only blocks stored by earlier batches. This reference does the
//! same: every map of a batch searches the table as it was at the batch's start,
//! then the batch's new blocks are appended in batch order. Identical inputs and
//! batches give identical output on both sides.
//!
//! Neighbouring probes have the most similar maps, so a batch of neighbours would
//! find nothing to share. [`ProbeOrder::swizzled`] spreads each batch across the
//! volume (batch `b` holds probes `b, b + K, b + 2K, ...` of a spatially coherent
//! order, `K` batches in all), so that by the time a probe is compressed its
//! neighbours `p - 1`, `p - 2`, ... already are, as in the reference's
//! `SwizzleProbeIndex`.

use std::collections::HashMap;

use super::bits::{bits_to_number, PackedInts, RankedBits, MAX_PACKED_WIDTH};
#[cfg(doc)]
use super::octahedral::symmetric_texel;
use super::octahedral::{quadrant_texel, VisibilityMap, OCT_RES, OCT_TEXELS, QUADRANT_RES, QUADRANT_TEXELS};
use super::table::BlockTable;

/// Quadrants of a map: entries per signature.
pub const QUADRANTS: usize = 4;

/// [`BlockEntry`] of a dead quadrant: no block, every texel is the clip value.
pub const DEAD_QUADRANT: u32 = u32::MAX;

/// A quadrant's entry as the compressor writes it: its block in the low 31 bits
/// and, in the top bit, whether the quadrant reads it transposed (see the module
/// docs); or [`DEAD_QUADRANT`]. [`ProbeIndex`] stores it packed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BlockEntry(pub u32);

impl BlockEntry {
    /// The transpose bit.
    pub const TRANSPOSED: u32 = 1 << 31;
    /// Blocks a dictionary may hold: every block number but the one
    /// [`DEAD_QUADRANT`] spells.
    pub const MAX_BLOCKS: usize = (Self::TRANSPOSED - 1) as usize;

    pub fn new(block: u32, transposed: bool) -> BlockEntry {
        debug_assert!((block as usize) < Self::MAX_BLOCKS);
        BlockEntry(block | if transposed { Self::TRANSPOSED } else { 0 })
    }

    pub fn is_dead(self) -> bool {
        self.0 == DEAD_QUADRANT
    }

    pub fn block(self) -> u32 {
        self.0 & !Self::TRANSPOSED
    }

    pub fn transposed(self) -> bool {
        self.0 & Self::TRANSPOSED != 0
    }
}

/// Compression settings; [`CompressParams::default`] is the reference's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompressParams {
    /// Quadrant blocks searched back from the newest (40,000: the reference's
    /// window of 10,000 whole maps, in quadrants).
    pub window: u32,
    /// Largest accepted texel difference, as a fraction of the clip range (0.01).
    pub tolerance: f32,
}

impl Default for CompressParams {
    fn default() -> CompressParams {
        CompressParams { window: 40_000, tolerance: 0.01 }
    }
}

/// Words of a stored block: [`DEPTH_WORDS`] of depth codes (four per word), then
/// eight of spread codes (eight per word).
pub const BLOCK_WORDS: usize = DEPTH_WORDS + QUADRANT_TEXELS / 8;

/// Words of depth codes at the start of a block: texel `i` in byte `i % 4` of
/// word `i / 4`.
pub const DEPTH_WORDS: usize = QUADRANT_TEXELS / 4;

/// A block as the compressor stores it, one quadrant in its frame (row-major
/// `cy * 8 + cx`): texel `i`'s 7-bit depth code in byte `i % 4` of word `i / 4`,
/// its 4-bit spread code in bits `4 * (i % 8)..` of word `DEPTH_WORDS + i / 8`
/// ([`encode_texel`]). 96 bytes.
pub type Block = [u32; BLOCK_WORDS];

/// `QUADRANT_MAP[q][i]`: the map texel at place `i` of quadrant `q`'s frame.
pub const QUADRANT_MAP: [[u8; QUADRANT_TEXELS]; QUADRANTS] = {
    let mut table = [[0u8; QUADRANT_TEXELS]; QUADRANTS];
    let mut t = 0;
    while t < OCT_TEXELS {
        let (q, cx, cy) = quadrant_texel(t % OCT_RES, t / OCT_RES);
        table[q][cy * QUADRANT_RES + cx] = t as u8;
        t += 1;
    }
    table
};

/// The block texel that place `i` of a quadrant's frame reads, as is or transposed.
#[inline]
pub const fn block_texel(i: usize, transposed: bool) -> usize {
    if transposed {
        (i % QUADRANT_RES) * QUADRANT_RES + i / QUADRANT_RES
    } else {
        i
    }
}

/// The order in which maps are compressed, cut into batches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeOrder {
    /// Probe indices, each exactly once.
    pub order: Vec<u32>,
    /// `order[batches[i]..batches[i + 1]]` is batch `i`; starts with 0, ends with
    /// `order.len()`.
    pub batches: Vec<u32>,
}

impl ProbeOrder {
    /// Probes `0..n` in order, `batch` per batch: one per batch is the sequential
    /// compressor, the best ratio and the slowest on a GPU.
    pub fn linear(n: u32, batch: u32) -> ProbeOrder {
        let batch = batch.max(1);
        let mut batches: Vec<u32> = (0..n).step_by(batch as usize).collect();
        batches.push(n);
        ProbeOrder { order: (0..n).collect(), batches }
    }

    /// Probes `0..n` in `ceil(n / batch)` batches; batch `b` holds `b, b + K,
    /// b + 2K, ...` (see the module docs).
    pub fn swizzled(n: u32, batch: u32) -> ProbeOrder {
        let count = n.div_ceil(batch.max(1)).max(1);
        let mut order = Vec::with_capacity(n as usize);
        let mut batches = vec![0];
        for b in 0..count.min(n) {
            order.extend((b..n).step_by(count as usize));
            batches.push(order.len() as u32);
        }
        if n == 0 {
            batches.push(0);
        }
        ProbeOrder { order, batches }
    }

    pub fn batch_count(&self) -> usize {
        self.batches.len() - 1
    }

    pub fn batch(&self, i: usize) -> &[u32] {
        &self.order[self.batches[i] as usize..self.batches[i + 1] as usize]
    }
}

/// The largest block number a [`ProbeIndex`] entry holds (31-bit entries, all
/// ones dead); [`CompressedVisibility::check`] accepts fewer than `1 << 30` blocks.
const MAX_INDEXED_BLOCK: u32 = (1 << 30) - 2;

/// How a [`ProbeIndex`] is stored, when not left to its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexForm {
    /// Each live probe has its own signature, at its rank.
    Direct,
    /// Live probes name shared signatures by number.
    Numbered,
}

/// Which blocks the live probes' quadrants read (see the module docs, "Dead
/// probes and signatures"): four entries per *signature*, and per live probe the
/// number of its signature, unless each live probe has its own (then the number
/// is its rank and is not stored).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProbeIndex {
    /// Per live probe, by rank, its signature's number; `None`: signature `r` is
    /// the live probe with rank `r`'s own.
    pub numbers: Option<PackedInts>,
    /// Entry `q` of signature `s` at `4 s + q`: `2 * block + transpose bit`, or
    /// all ones for a dead quadrant, in [`ProbeIndex::entry_width`] bits.
    pub entries: PackedInts,
}

impl ProbeIndex {
    /// Bits of an entry for a dictionary of `blocks`: the fewest that hold every
    /// `2 * block + 1` and leave all ones free for a dead quadrant.
    pub fn entry_width(blocks: usize) -> u32 {
        bits_to_number(2 * blocks + 1)
    }

    /// The index of the live probes' entries (`live[r]`: the four [`BlockEntry`]s of
    /// the live probe with rank `r`) for a dictionary of `blocks`. Signatures are
    /// numbered in first use; the form is the smaller one (direct on a tie), or
    /// `form`. An entry naming a block past the dictionary widens the entries to
    /// hold it ([`CompressedVisibility::check`] refuses both).
    pub fn new(live: &[[BlockEntry; QUADRANTS]], blocks: usize, form: Option<IndexForm>) -> ProbeIndex {
        // Blocks past 2^30 - 2 (a corrupt read-back) are kept as that one, which no
        // dictionary `check` accepts holds.
        let block = |e: &BlockEntry| e.block().min(MAX_INDEXED_BLOCK);
        let named = live.iter().flatten().filter(|e| !e.is_dead()).map(|e| block(e) as usize + 1).max();
        let width = Self::entry_width(blocks.max(named.unwrap_or(0))).min(MAX_PACKED_WIDTH);
        let dead = (1u32 << width) - 1;
        let value = |e: &BlockEntry| if e.is_dead() { dead } else { block(e) * 2 + u32::from(e.transposed()) };
        let mut signatures: Vec<&[BlockEntry; QUADRANTS]> = Vec::new();
        let mut known: HashMap<&[BlockEntry; QUADRANTS], u32> = HashMap::new();
        let numbers: Vec<u32> = live
            .iter()
            .map(|entries| {
                *known.entry(entries).or_insert_with(|| {
                    signatures.push(entries);
                    signatures.len() as u32 - 1
                })
            })
            .collect();
        let number_width = bits_to_number(signatures.len());
        let numbered_words = PackedInts::words_for(live.len(), number_width)
            + PackedInts::words_for(signatures.len() * QUADRANTS, width);
        let numbered = match form {
            Some(form) => form == IndexForm::Numbered,
            None => numbered_words < PackedInts::words_for(live.len() * QUADRANTS, width),
        };
        let kept = if numbered { signatures } else { live.iter().collect() };
        let values: Vec<u32> = kept.iter().flat_map(|entries| entries.iter().map(value)).collect();
        ProbeIndex {
            numbers: numbered.then(|| PackedInts::new(&numbers, number_width)),
            entries: PackedInts::new(&values, width),
        }
    }

    /// Signatures stored.
    pub fn signature_count(&self) -> usize {
        self.entries.len() / QUADRANTS
    }

    /// The signature of the live probe with rank `rank`.
    #[inline]
    pub fn signature(&self, rank: usize) -> usize {
        self.numbers.as_ref().map_or(rank, |n| n.get(rank) as usize)
    }

    /// Entry `q` of signature `s`.
    #[inline]
    pub fn entry(&self, s: usize, q: usize) -> BlockEntry {
        let e = self.entries.get(s * QUADRANTS + q);
        if e == (1 << self.entries.width()) - 1 {
            BlockEntry(DEAD_QUADRANT)
        } else {
            BlockEntry::new(e >> 1, e & 1 == 1)
        }
    }

    /// What the GPU needs besides the words: whether live probes are numbered, the
    /// bits of a number and of an entry.
    pub fn layout(&self) -> [u32; 3] {
        [u32::from(self.numbers.is_some()), self.numbers.as_ref().map_or(0, PackedInts::width), self.entries.width()]
    }

    /// Bytes stored: the numbers, the entries, and the signature count with the
    /// form (4 bytes; the widths follow from the counts).
    pub fn bytes(&self) -> usize {
        self.numbers.as_ref().map_or(0, PackedInts::bytes) + self.entries.bytes() + 4
    }
}

/// Compressed visibility of a set of probes (see the module docs, "Dead probes and
/// signatures").
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompressedVisibility {
    /// A bit per probe, set for a live probe (one with a quadrant that sees
    /// something, or any probe before a bake), with ranks: the live probe with rank
    /// `r` reads signature `index.signature(r)` and keeps its irradiance at `r`
    /// (`ProbeField`). Dead probes store neither and are not sampled.
    pub live: RankedBits,
    /// The live probes' quadrants' blocks, by signature.
    pub index: ProbeIndex,
    /// The dictionary, in groups by spread width and texels kept.
    pub blocks: BlockTable,
}

impl CompressedVisibility {
    /// Visibility of `probes` probes that all see nothing: every probe dead.
    pub fn dead(probes: usize) -> CompressedVisibility {
        CompressedVisibility { live: RankedBits::from_fn(probes, |_| false), ..CompressedVisibility::default() }
    }

    /// Visibility of `probes` probes not baked yet: every probe live (it keeps
    /// irradiance and is sampled) with every quadrant dead (it sees the clip value
    /// everywhere, so visibility weighting leaves it alone). The index is one
    /// signature per probe in 0-bit entries: no words.
    pub fn unbaked(probes: usize) -> CompressedVisibility {
        let unknown = vec![[BlockEntry(DEAD_QUADRANT); QUADRANTS]; probes];
        CompressedVisibility {
            live: RankedBits::from_fn(probes, |_| true),
            index: ProbeIndex::new(&unknown, 0, None),
            blocks: BlockTable::default(),
        }
    }

    /// From every probe's four [`BlockEntry`]s (`entries[4 p + q]`, as the GPU
    /// compressor writes them) and the dictionary as the compressor stores it: dead
    /// probes keep nothing but their bit, and the blocks go into their groups
    /// ([`BlockTable::pack`]), the entries renumbered to match. An entry naming no
    /// block keeps a number past the table's end ([`CompressedVisibility::check`]
    /// refuses it).
    pub fn from_entries(entries: &[u32], blocks: Vec<Block>) -> CompressedVisibility {
        assert_eq!(entries.len() % QUADRANTS, 0, "four entries per probe");
        let (table, numbers) = BlockTable::pack(&blocks);
        let probe = |p: usize| &entries[p * QUADRANTS..(p + 1) * QUADRANTS];
        let live =
            RankedBits::from_fn(entries.len() / QUADRANTS, |p| probe(p).iter().any(|&e| !BlockEntry(e).is_dead()));
        let number = |e: u32| match BlockEntry(e) {
            e if e.is_dead() => e,
            e => BlockEntry::new(numbers.get(e.block() as usize).copied().unwrap_or(e.block()), e.transposed()),
        };
        let kept: Vec<[BlockEntry; QUADRANTS]> = (0..live.len())
            .filter(|&p| live.rank(p).is_some())
            .map(|p| std::array::from_fn(|q| number(probe(p)[q])))
            .collect();
        let index = ProbeIndex::new(&kept, table.len(), None);
        CompressedVisibility { live, index, blocks: table }
    }

    /// Every probe's four [`BlockEntry`]s, dead probes included: what
    /// [`CompressedVisibility::from_entries`] takes.
    pub fn entries(&self) -> Vec<u32> {
        (0..self.probe_count() * QUADRANTS).map(|i| self.entry(i / QUADRANTS, i % QUADRANTS).0).collect()
    }

    pub fn probe_count(&self) -> usize {
        self.live.len()
    }

    /// Quadrant `q` of probe `p`: its block and transpose bit, or dead.
    #[inline]
    pub fn entry(&self, p: usize, q: usize) -> BlockEntry {
        let Some(rank) = self.live.rank(p) else {
            return BlockEntry(DEAD_QUADRANT);
        };
        self.index.entry(self.index.signature(rank as usize), q)
    }

    /// Probe `p`'s texel `t` as `[depth, depth^2]` over the clip distance.
    #[inline]
    pub fn texel(&self, p: usize, t: usize) -> [f32; 2] {
        let (q, i) = TEXEL_PLACE[t];
        let entry = self.entry(p, q as usize);
        if entry.is_dead() {
            return [1.0, 1.0];
        }
        self.blocks.value(entry.block() as usize, block_texel(i as usize, entry.transposed()))
    }

    pub fn decode(&self, p: usize) -> VisibilityMap {
        VisibilityMap(std::array::from_fn(|t| self.texel(p, t)))
    }

    /// Probe `p` sees nothing within the clip distance: all four quadrants dead.
    pub fn is_dead(&self, p: usize) -> bool {
        self.live.rank(p).is_none()
    }

    /// Probes that see nothing.
    pub fn dead_count(&self) -> usize {
        self.probe_count() - self.live.count()
    }

    /// Bytes stored: the live mask, the index (signature numbers and entries), and
    /// the block table (group records, the distinct masks, and per block its mask's
    /// number and 7 to 11 bits per texel that is not the clip value).
    pub fn bytes(&self) -> usize {
        self.live.bytes() + self.index.bytes() + self.blocks.bytes()
    }

    /// Why these parts do not fit together, if they do not: the dictionary can
    /// hold no more blocks than there are quadrants; the index must have a
    /// signature per live probe, or a number per live probe naming a stored
    /// signature, numbers and entries in the widths their counts give; and entries
    /// must name stored blocks.
    pub fn check(&self) -> Result<(), String> {
        let quadrants = self.probe_count() * QUADRANTS;
        let blocks = self.blocks.len();
        if blocks > quadrants || blocks >= 1 << 30 {
            return Err(format!("{blocks} blocks for {} probes ({quadrants} quadrants)", self.probe_count()));
        }
        let (index, live) = (&self.index, self.live.count());
        let signatures = index.signature_count();
        let numbers_fit = match &index.numbers {
            None => signatures == live,
            Some(n) => n.len() == live && n.width() == bits_to_number(signatures),
        };
        let width = ProbeIndex::entry_width(blocks);
        if !numbers_fit || index.entries.len() % QUADRANTS != 0 || index.entries.width() != width {
            return Err(format!(
                "an index of {} entries in {} bits and {} numbers for {live} live probes and {blocks} blocks",
                index.entries.len(),
                index.entries.width(),
                index.numbers.as_ref().map_or("no".to_owned(), |n| format!("{} {}-bit", n.len(), n.width()))
            ));
        }
        if let Some(r) = (0..live).find(|&r| index.signature(r) >= signatures) {
            return Err(format!("live probe {r} names signature {} of {signatures}", index.signature(r)));
        }
        let missing = |i: &usize| {
            let e = index.entry(i / QUADRANTS, i % QUADRANTS);
            !e.is_dead() && e.block() as usize >= blocks
        };
        if let Some(i) = (0..signatures * QUADRANTS).find(missing) {
            let block = index.entry(i / QUADRANTS, i % QUADRANTS).block();
            return Err(format!("entry {i} names block {block} of {blocks}"));
        }
        Ok(())
    }
}

/// Each map texel's quadrant and place in its frame, the inverse of [`QUADRANT_MAP`].
const TEXEL_PLACE: [(u8, u8); OCT_TEXELS] = {
    let mut table = [(0u8, 0u8); OCT_TEXELS];
    let mut t = 0;
    while t < OCT_TEXELS {
        let (q, cx, cy) = quadrant_texel(t % OCT_RES, t / OCT_RES);
        table[t] = (q as u8, (cy * QUADRANT_RES + cx) as u8);
        t += 1;
    }
    table
};

/// `[depth, depth^2]` (over the clip distance, in [0, 1]) as `(depth, spread)`
/// codes: depth in 7-bit unorm, and the spread `depth^2 - d * d` over the decoded
/// depth `d` in 4 bits, steps of 1/60 on [0, 1/4] (see the module docs). Both
/// rounded to nearest.
#[inline]
pub fn encode_texel([d, d2]: [f32; 2]) -> (u32, u32) {
    let depth = quantise(d);
    let decoded = depth as f32 * DEPTH_STEP;
    let spread = (d2 - decoded * decoded).clamp(0.0, SPREAD_MAX) * SPREAD_CODES + 0.5;
    (depth, spread as u32)
}

/// `floor(v * 127 + 0.5)` on [0, 1]: the same correctly rounded multiply and add on
/// the GPU (`precise` there, so never fused), hence the same bits.
#[inline]
fn quantise(v: f32) -> u32 {
    (v.clamp(0.0, 1.0) * DEPTH_MAX as f32 + 0.5) as u32
}

/// Bits of a depth code.
pub const DEPTH_BITS: usize = 7;
/// The largest depth code: the clip value.
pub const DEPTH_MAX: u32 = (1 << DEPTH_BITS) - 1;

/// One step of 7-bit unorm; decoding multiplies (correctly rounded on both sides,
/// where a division need not be on the GPU).
const DEPTH_STEP: f32 = 1.0 / DEPTH_MAX as f32;

/// Largest spread a code holds: the variance of values in [0, 1] is at most 1/4.
const SPREAD_MAX: f32 = 0.25;
/// Spread codes per unit: 15 steps over [0, 1/4].
const SPREAD_CODES: f32 = 60.0;
/// One step of spread.
const SPREAD_STEP: f32 = 1.0 / 60.0;

/// [`encode_texel`]'s inverse: `[d, min(d * d + spread, 1)]`.
#[inline]
pub fn decode_texel(depth: u32, spread: u32) -> [f32; 2] {
    let d = depth as f32 * DEPTH_STEP;
    [d, (d * d + spread as f32 * SPREAD_STEP).min(1.0)]
}

/// Blocks from their words, [`BLOCK_WORDS`] each (a device read-back).
pub fn blocks_from_words(words: &[u32]) -> Vec<Block> {
    words.chunks_exact(BLOCK_WORDS).map(|c| <Block>::try_from(c).expect("chunks of one block")).collect()
}

/// Texel `i` of `block`.
#[inline]
pub fn block_value(block: &Block, i: usize) -> [f32; 2] {
    decode_texel(block[i / 4] >> (i % 4 * 8) & 0xff, block[DEPTH_WORDS + i / 8] >> (i % 8 * 4) & 0xf)
}

/// A quadrant packed into a block.
pub fn pack_block(quadrant: &[[f32; 2]; QUADRANT_TEXELS]) -> Block {
    let mut block = [0; BLOCK_WORDS];
    for (i, &texel) in quadrant.iter().enumerate() {
        let (depth, spread) = encode_texel(texel);
        block[i / 4] |= depth << (i % 4 * 8);
        block[DEPTH_WORDS + i / 8] |= spread << (i % 8 * 4);
    }
    block
}

/// One quadrant of a map in its frame.
type Quadrant = [[f32; 2]; QUADRANT_TEXELS];

/// Largest texel difference of `quadrant` to a block (unpacked), as is or
/// transposed, is at most `tolerance`.
fn matches(quadrant: &Quadrant, block: &Quadrant, transposed: bool, tolerance: f32) -> bool {
    quadrant.iter().enumerate().all(|(i, m)| {
        let b = block[block_texel(i, transposed)];
        (m[0] - b[0]).abs() <= tolerance && (m[1] - b[1]).abs() <= tolerance
    })
}

fn is_dead(quadrant: &Quadrant, tolerance: f32) -> bool {
    quadrant.iter().all(|m| (m[0] - 1.0).abs() <= tolerance && (m[1] - 1.0).abs() <= tolerance)
}

/// Mean depths a transpose leaves unchanged: of the whole quadrant, and of its
/// 4 x 4 texels nearest the pole. A match differs from the block by at most the
/// tolerance in every texel, hence in both means.
fn invariant_means(depth: impl Fn(usize) -> f32) -> [f32; 2] {
    let all = (0..QUADRANT_TEXELS).map(&depth).sum::<f32>() / QUADRANT_TEXELS as f32;
    let pole = (0..4).flat_map(|y| (0..4).map(move |x| y * QUADRANT_RES + x)).map(&depth).sum::<f32>() / 16.0;
    [all, pole]
}

/// Slack on the mean-depth prefilter, so float summation order never makes it
/// reject a true match (the full comparison alone decides).
const MEAN_SLACK: f32 = 1e-4;

/// Stored blocks by their whole-quadrant mean depth, in cells a little wider than
/// the prefilter's reach: every block within reach of a mean lies in that mean's
/// cell or one of its two neighbours, so a search walks three short lists instead
/// of the whole window. It visits the same blocks in the same order (newest first)
/// as a scan of the window with the prefilter would, so the result is the same.
struct MeanCells {
    width: f32,
    /// Block numbers per cell, ascending.
    cells: Vec<Vec<u32>>,
}

impl MeanCells {
    fn new(reach: f32) -> MeanCells {
        // 1% wider than the reach, so float rounding in `mean / width` never puts two
        // means within reach two cells apart. Means of normalised maps lie in
        // [0, 1]; any others clamp to the end cells, which keeps that property.
        let width = reach * 1.01;
        let count = ((1.0 / width).ceil() as usize).clamp(1, 1 << 16) + 1;
        MeanCells { width, cells: vec![Vec::new(); count] }
    }

    /// One cell for every block: a search scans the whole window (tests compare).
    #[cfg(test)]
    fn one() -> MeanCells {
        MeanCells { width: f32::INFINITY, cells: vec![Vec::new()] }
    }

    fn cell(&self, mean: f32) -> usize {
        ((mean / self.width).floor().max(0.0) as usize).min(self.cells.len() - 1)
    }

    fn push(&mut self, mean: f32, block: u32) {
        let c = self.cell(mean);
        self.cells[c].push(block);
    }

    /// Calls `f` on the blocks `>= start` in reach of `mean`, newest first, until it
    /// returns something.
    fn find_map<R>(&self, mean: f32, start: usize, mut f: impl FnMut(usize) -> Option<R>) -> Option<R> {
        let c = self.cell(mean);
        let lists: [&[u32]; 3] =
            std::array::from_fn(|k| (c + k).checked_sub(1).and_then(|i| self.cells.get(i)).map_or(&[][..], |v| v));
        let mut ends = lists.map(|l| l.len());
        loop {
            let next = (0..3).filter(|&k| ends[k] > 0).max_by_key(|&k| lists[k][ends[k] - 1])?;
            ends[next] -= 1;
            let block = lists[next][ends[next]] as usize;
            if block < start {
                return None;
            }
            if let Some(r) = f(block) {
                return Some(r);
            }
        }
    }
}

/// Compresses `maps` (one per probe) in `order` (see the module docs). Every texel
/// decodes within the tolerance for maps as the bake makes them, whose depth^2 is
/// at least depth * depth (a mean of squares); a texel whose depth^2 lies below
/// that may read back as far off again.
pub fn compress(maps: &[VisibilityMap], order: &ProbeOrder, params: &CompressParams) -> CompressedVisibility {
    compress_with(maps, order, params, MeanCells::new(params.tolerance + MEAN_SLACK))
}

fn compress_with(
    maps: &[VisibilityMap],
    order: &ProbeOrder,
    params: &CompressParams,
    cells: MeanCells,
) -> CompressedVisibility {
    assert_eq!(order.order.len(), maps.len(), "the order must visit every map once");
    let mut entries = vec![DEAD_QUADRANT; maps.len() * QUADRANTS];
    let mut dictionary = Dictionary::new(params, cells);
    let mut fresh: Vec<(usize, Quadrant)> = Vec::new();
    for b in 0..order.batch_count() {
        let window_start = dictionary.blocks.len().saturating_sub(params.window as usize);
        fresh.clear();
        for &p in order.batch(b) {
            for (q, places) in QUADRANT_MAP.iter().enumerate() {
                let quadrant: Quadrant = std::array::from_fn(|i| maps[p as usize].0[places[i] as usize]);
                if is_dead(&quadrant, params.tolerance) {
                    continue;
                }
                let slot = p as usize * QUADRANTS + q;
                match dictionary.find(&quadrant, window_start) {
                    Some(entry) => entries[slot] = entry.0,
                    None => fresh.push((slot, quadrant)),
                }
            }
        }
        assert!(
            dictionary.blocks.len() + fresh.len() <= BlockEntry::MAX_BLOCKS,
            "more than {} visibility blocks",
            BlockEntry::MAX_BLOCKS
        );
        for (slot, quadrant) in &fresh {
            entries[*slot] = dictionary.push(pack_block(quadrant));
        }
    }
    CompressedVisibility::from_entries(&entries, dictionary.blocks)
}

/// Stored blocks and what a search needs of them: their mean depths, unpacked
/// copies and the mean cells.
struct Dictionary {
    blocks: Vec<Block>,
    /// Mean depths of each stored block: |mean(a) - mean(b)| <= max |a - b|, so a
    /// block whose means are further than the tolerance cannot match.
    means: Vec<[f32; 2]>,
    /// The blocks unpacked, for the comparisons.
    unpacked: Vec<Quadrant>,
    cells: MeanCells,
    tolerance: f32,
}

impl Dictionary {
    fn new(params: &CompressParams, cells: MeanCells) -> Dictionary {
        Dictionary { blocks: Vec::new(), means: Vec::new(), unpacked: Vec::new(), cells, tolerance: params.tolerance }
    }

    /// The newest block from `start` on that `quadrant` matches, as is or transposed.
    fn find(&self, quadrant: &Quadrant, start: usize) -> Option<BlockEntry> {
        let reach = self.tolerance + MEAN_SLACK;
        let mean = invariant_means(|i| quadrant[i][0]);
        self.cells.find_map(mean[0], start, |j| {
            let m = self.means[j];
            if (m[0] - mean[0]).abs() > reach || (m[1] - mean[1]).abs() > reach {
                return None;
            }
            [false, true]
                .into_iter()
                .find(|&t| matches(quadrant, &self.unpacked[j], t, self.tolerance))
                .map(|t| BlockEntry::new(j as u32, t))
        })
    }

    /// Stores `block`; returns its number.
    fn push(&mut self, block: Block) -> u32 {
        let texels: Quadrant = std::array::from_fn(|i| block_value(&block, i));
        let means = invariant_means(|i| texels[i][0]);
        let number = self.blocks.len() as u32;
        self.cells.push(means[0], number);
        self.means.push(means);
        self.unpacked.push(texels);
        self.blocks.push(block);
        number
    }
}

/// What [`recompress`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recompression {
    /// Quadrants of the new maps that matched a block already stored.
    pub matched: u32,
    /// Blocks the new maps added.
    pub added: u32,
    /// Blocks no probe reads any more, dropped.
    pub reclaimed: u32,
}

/// `vis` with the maps of `probes` replaced by `maps`, without a full rebuild:
/// only the new maps are matched, against the whole stored dictionary (newest
/// first) and the blocks they add, one at a time; blocks no probe reads any more
/// are reclaimed and the rest keep their order; then the table and the index are
/// packed again (linear in their size, no search). Every other probe decodes as
/// before, and every new map within the tolerance.
pub fn recompress(
    vis: &CompressedVisibility,
    probes: &[u32],
    maps: &[VisibilityMap],
    params: &CompressParams,
) -> (CompressedVisibility, Recompression) {
    assert_eq!(probes.len(), maps.len(), "a map per probe");
    let mut entries = vis.entries();
    let mut dictionary = Dictionary::new(params, MeanCells::new(params.tolerance + MEAN_SLACK));
    for block in vis.blocks.blocks() {
        dictionary.push(block);
    }
    let stored = dictionary.blocks.len();
    let mut report = Recompression::default();
    for (&p, map) in probes.iter().zip(maps) {
        for (q, places) in QUADRANT_MAP.iter().enumerate() {
            let quadrant: Quadrant = std::array::from_fn(|i| map.0[places[i] as usize]);
            let slot = p as usize * QUADRANTS + q;
            entries[slot] = if is_dead(&quadrant, params.tolerance) {
                DEAD_QUADRANT
            } else if let Some(entry) = dictionary.find(&quadrant, 0) {
                report.matched += 1;
                entry.0
            } else {
                assert!(
                    dictionary.blocks.len() < BlockEntry::MAX_BLOCKS,
                    "more than {} blocks",
                    BlockEntry::MAX_BLOCKS
                );
                report.added += 1;
                dictionary.push(pack_block(&quadrant))
            };
        }
    }
    // Reclaim: keep the blocks some entry reads, in order, and renumber.
    let mut used = vec![false; dictionary.blocks.len()];
    for &e in &entries {
        if !BlockEntry(e).is_dead() {
            used[BlockEntry(e).block() as usize] = true;
        }
    }
    let mut number = vec![u32::MAX; used.len()];
    let mut kept = Vec::with_capacity(used.len());
    for (b, block) in dictionary.blocks.into_iter().enumerate() {
        if used[b] {
            number[b] = kept.len() as u32;
            kept.push(block);
        }
    }
    report.reclaimed = (stored + report.added as usize - kept.len()) as u32;
    for e in &mut entries {
        let entry = BlockEntry(*e);
        if !entry.is_dead() {
            *e = BlockEntry::new(number[entry.block() as usize], entry.transposed()).0;
        }
    }
    (CompressedVisibility::from_entries(&entries, kept), report)
}

#[cfg(test)]
mod tests {
    use super::super::octahedral::symmetric_texel;
    use super::*;

    fn rng(seed: &mut u32) -> f32 {
        *seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (*seed >> 8) as f32 / (1u32 << 24) as f32
    }

    /// Maps from a few prototypes plus small noise, some dead, some noisy beyond
    /// the tolerance.
    fn maps(n: usize, seed: &mut u32) -> Vec<VisibilityMap> {
        let protos: Vec<VisibilityMap> = (0..6)
            .map(|_| {
                let mut m = VisibilityMap::clipped();
                for t in m.0.iter_mut() {
                    let d = rng(seed);
                    *t = [d, d * d];
                }
                m
            })
            .collect();
        (0..n)
            .map(|_| {
                let r = rng(seed);
                if r < 0.3 {
                    let mut m = VisibilityMap::clipped();
                    m.0[7] = [1.0 - 0.004, 1.0 - 0.008];
                    m
                } else if r < 0.8 {
                    // Depth noise, and depth^2 its square, as a map of one
                    // surface per texel holds.
                    let mut m = protos[(rng(seed) * 6.0) as usize % 6].clone();
                    for t in m.0.iter_mut() {
                        let d = (t[0] + (rng(seed) - 0.5) * 0.004).clamp(0.0, 1.0);
                        *t = [d, d * d];
                    }
                    m
                } else {
                    let mut m = VisibilityMap::clipped();
                    for t in m.0.iter_mut() {
                        let d = rng(seed);
                        *t = [d, d * d];
                    }
                    m
                }
            })
            .collect()
    }

    #[test]
    fn every_texel_decodes_within_the_tolerance_and_dead_probes_to_clip() {
        let mut seed = 7;
        let maps = maps(3000, &mut seed);
        for order in [ProbeOrder::linear(3000, 1), ProbeOrder::linear(3000, 64), ProbeOrder::swizzled(3000, 64)] {
            let params = CompressParams::default();
            let c = compress(&maps, &order, &params);
            // 6 prototypes and 20% of noise maps, four quadrants each.
            assert!(c.blocks.len() < maps.len() * QUADRANTS / 3, "{} blocks", c.blocks.len());
            assert!(c.dead_count() >= 800, "{} dead", c.dead_count());
            for (p, map) in maps.iter().enumerate() {
                let back = c.decode(p);
                for t in 0..OCT_TEXELS {
                    for ch in 0..2 {
                        assert!((back.0[t][ch] - map.0[t][ch]).abs() <= params.tolerance);
                    }
                }
                if c.is_dead(p) {
                    assert_eq!(back, VisibilityMap::clipped());
                }
                for t in 0..OCT_TEXELS {
                    let (q, _, _) = quadrant_texel(t % OCT_RES, t / OCT_RES);
                    if c.entry(p, q).is_dead() {
                        assert_eq!(back.0[t], [1.0, 1.0]);
                    }
                }
            }
        }
    }

    /// Half a step of each code, and a little for the decoding's float operations:
    /// the largest error of a texel whose depth^2 is at least depth * depth.
    const DEPTH_ERROR: f32 = 0.5 / 127.0 + 1e-6;
    const DEPTH2_ERROR: f32 = 0.5 / 60.0 + 1e-6;

    #[test]
    fn texels_round_trip_within_half_a_code_step() {
        // Every texel a map can hold: depth^2, a mean of squares of values in
        // [0, 1], lies between depth * depth and depth.
        for k in 0..=2000 {
            let d = k as f32 / 2000.0;
            for j in 0..=40 {
                let d2 = d * d + (d - d * d) * j as f32 / 40.0;
                let (depth, spread) = encode_texel([d, d2]);
                assert!(depth <= DEPTH_MAX && spread <= 15);
                let [dd, dd2] = decode_texel(depth, spread);
                assert!((dd - d).abs() <= DEPTH_ERROR && (dd2 - d2).abs() <= DEPTH2_ERROR, "{d} {d2}: {dd} {dd2}");
            }
        }
        // The clip value and zero are exact; out-of-range values clamp, and the
        // decoded depth^2 is at least the decoded depth squared.
        assert_eq!(encode_texel([1.0, 1.0]), (127, 0));
        assert_eq!(decode_texel(127, 0), [1.0, 1.0]);
        assert_eq!(decode_texel(0, 0), [0.0, 0.0]);
        assert_eq!(encode_texel([1.5, -0.5]), (127, 0));
        assert_eq!(encode_texel([0.5, 2.0]).1, 15);
        // Depth codes four to a word from the low byte, then spread codes eight to
        // a word from the low nibble.
        let quadrant: [[f32; 2]; QUADRANT_TEXELS] = std::array::from_fn(|i| {
            let d = i as f32 / 63.0;
            [d, d * d + (d - d * d) * 0.5]
        });
        let block = pack_block(&quadrant);
        assert_eq!(std::mem::size_of::<Block>(), 96);
        for (i, &t) in quadrant.iter().enumerate() {
            let (depth, spread) = encode_texel(t);
            assert_eq!(block_value(&block, i), decode_texel(depth, spread));
            assert_eq!(block[i / 4] >> (8 * (i % 4)) & 0xff, depth);
            assert_eq!(block[DEPTH_WORDS + i / 8] >> (4 * (i % 8)) & 0xf, spread);
        }
    }

    /// A map read through each symmetry of the square shares the first one's four
    /// blocks, transposed when the symmetry swaps the axes, and every probe decodes
    /// to its own map.
    #[test]
    fn symmetric_maps_share_four_blocks() {
        let mut seed = 11;
        let mut base = VisibilityMap::clipped();
        for t in base.0.iter_mut() {
            let d = rng(&mut seed);
            *t = [d, d * d];
        }
        let turned: Vec<VisibilityMap> = (0..8)
            .map(|s| {
                VisibilityMap(std::array::from_fn(|t| {
                    let (x, y) = symmetric_texel(s, t % OCT_RES, t / OCT_RES);
                    base.0[y * OCT_RES + x]
                }))
            })
            .collect();
        let c = compress(&turned, &ProbeOrder::linear(8, 1), &CompressParams::default());
        assert_eq!(c.blocks.len(), QUADRANTS);
        for (s, map) in turned.iter().enumerate() {
            let entries: Vec<BlockEntry> = (0..QUADRANTS).map(|q| c.entry(s, q)).collect();
            let mut blocks: Vec<u32> = entries.iter().map(|e| e.block()).collect();
            blocks.sort_unstable();
            assert_eq!(blocks, [0, 1, 2, 3], "symmetry {s}");
            assert!(entries.iter().all(|e| e.transposed() == (s & 4 != 0)), "symmetry {s}: {entries:?}");
            let decoded = c.decode(s);
            for (got, want) in decoded.0.iter().zip(&map.0) {
                assert!((got[0] - want[0]).abs() <= DEPTH_ERROR && (got[1] - want[1]).abs() <= DEPTH2_ERROR);
            }
        }
    }

    /// The mean cells only skip blocks the prefilter would reject: the output
    /// equals a scan of the whole window, for maps whose means fall on and around
    /// cell edges, and for tolerances from 0 to past the range.
    #[test]
    fn mean_cells_find_what_a_window_scan_finds() {
        let mut seed = 5;
        let mut maps = maps(1500, &mut seed);
        // Flat maps whose means step by a third of the reach across many cells.
        for k in 0..300 {
            let d = 0.2 + k as f32 * 0.0101 / 3.0;
            maps.push(VisibilityMap([[d, d * d]; OCT_TEXELS]));
        }
        let n = maps.len() as u32;
        for tolerance in [0.0, 0.003, 0.01, 0.05, 2.0] {
            for order in [ProbeOrder::linear(n, 1), ProbeOrder::swizzled(n, 64)] {
                let params = CompressParams { window: 3000, tolerance };
                let fast = compress(&maps, &order, &params);
                let scan = compress_with(&maps, &order, &params, MeanCells::one());
                assert!(fast == scan, "tolerance {tolerance}, {} batches", order.batch_count());
            }
        }
    }

    #[test]
    fn the_window_limits_how_far_back_a_match_is_found() {
        let mut seed = 3;
        let mut distinct: Vec<VisibilityMap> = (0..20)
            .map(|_| {
                let mut m = VisibilityMap::clipped();
                m.0.iter_mut().for_each(|t| {
                    let d = rng(&mut seed) * 0.9;
                    *t = [d, d * d];
                });
                m
            })
            .collect();
        // The first map again at the end: its four blocks are 80 to 77 back.
        distinct.push(distinct[0].clone());
        let n = distinct.len() as u32;
        let wide = compress(&distinct, &ProbeOrder::linear(n, 1), &CompressParams { window: 80, tolerance: 0.01 });
        assert_eq!(wide.entries()[80..], [0, 1, 2, 3]);
        assert_eq!(wide.blocks.len(), 80);
        let narrow = compress(&distinct, &ProbeOrder::linear(n, 1), &CompressParams { window: 79, tolerance: 0.01 });
        assert_eq!(narrow.entries()[80..], [80, 1, 2, 3]);
        assert_eq!(narrow.blocks.len(), 81);
    }

    #[test]
    fn maps_of_one_batch_cannot_share_a_block() {
        // Texel (0, 0) lies in quadrant 0; the other three quadrants are dead.
        let mut m = VisibilityMap::clipped();
        m.0[0] = [0.5, 0.25];
        let maps = vec![m.clone(), m.clone(), m];
        assert_eq!(compress(&maps, &ProbeOrder::linear(3, 1), &CompressParams::default()).blocks.len(), 1);
        let one_batch = compress(&maps, &ProbeOrder::linear(3, 3), &CompressParams::default());
        assert_eq!(one_batch.blocks.len(), 3);
        let d = DEAD_QUADRANT;
        assert_eq!(one_batch.entries(), [0, d, d, d, 1, d, d, d, 2, d, d, d]);
    }

    /// Live probes with the same four entries share a signature when numbering
    /// them stores less, and each keeps its own otherwise; either form, forced,
    /// reads the same entries. Entries take `2 * blocks + 1`'s bits, a dead
    /// quadrant all ones.
    #[test]
    fn probes_share_signatures_when_numbering_them_stores_less() {
        let (d, e) = (BlockEntry(DEAD_QUADRANT), |b: u32, t: bool| BlockEntry::new(b, t));
        let (a, b) = ([e(0, false), e(1, true), d, e(2, false)], [d, d, e(4, true), d]);
        assert_eq!((ProbeIndex::entry_width(0), ProbeIndex::entry_width(5)), (0, 4));
        assert_eq!((ProbeIndex::entry_width(7), ProbeIndex::entry_width(8)), (4, 5));
        // 100 probes of two signatures: a bit each and two signatures' 4-bit entries.
        let repeated: Vec<_> = (0..100).map(|r| if r % 3 == 0 { b } else { a }).collect();
        let shared = ProbeIndex::new(&repeated, 5, None);
        assert_eq!((shared.signature_count(), shared.layout()), (2, [1, 1, 4]));
        assert_eq!(shared.bytes(), 16 + 4 + 4, "100 1-bit numbers, 8 4-bit entries, the count");
        // Numbered in first use: probe 0 has `b`, probe 1 `a`.
        let stored: Vec<u32> = (0..8).map(|i| shared.entries.get(i)).collect();
        assert_eq!(stored, [15, 15, 9, 15, 0, 3, 15, 4]);
        // Two probes: their own signatures take less than numbers would add.
        let own = ProbeIndex::new(&repeated[..2], 5, None);
        assert_eq!((own.signature_count(), own.layout(), &own.numbers), (2, [0, 0, 4], &None));
        for (index, live) in [(&shared, &repeated[..]), (&own, &repeated[..2])] {
            let forced = [IndexForm::Direct, IndexForm::Numbered].map(|f| ProbeIndex::new(live, 5, Some(f)));
            for i in [index, &forced[0], &forced[1]] {
                for (r, entries) in live.iter().enumerate() {
                    assert_eq!((0..4).map(|q| i.entry(i.signature(r), q)).collect::<Vec<_>>(), entries);
                }
            }
            assert_eq!(forced[0].signature_count(), live.len());
            assert!(index.bytes() <= forced[0].bytes().min(forced[1].bytes()));
        }
        assert_eq!(ProbeIndex::new(&[], 0, None), ProbeIndex::default());
        // A corrupt read-back naming a block near 2^31 is kept, in 31 bits, as a
        // block no dictionary holds: refused by `check`, not a panic.
        let corrupt = [e(0x7FFF_FFF0, true), d, d, d];
        let index = ProbeIndex::new(&[corrupt], 5, None);
        assert_eq!((index.layout(), index.entry(0, 0)), ([0, 0, 31], e((1 << 30) - 2, true)));
        let entries: Vec<u32> = corrupt.iter().map(|e| e.0).collect();
        let c = CompressedVisibility::from_entries(&entries, vec![[0; BLOCK_WORDS]]);
        assert!(c.check().is_err(), "{:?}", c.check());
    }

    /// Dead probes keep a bit and nothing else; live ones four entries with their
    /// transpose bits, dead quadrants included; `entries` gives back what
    /// `from_entries` took, and `check` finds entries that do not fit.
    #[test]
    fn dead_probes_store_only_their_bit() {
        let d = DEAD_QUADRANT;
        let t = |b: u32| BlockEntry::new(b, true).0;
        // Probes 0, 2, 3 and 70 live; 70 sits past the first mask word.
        let mut entries = vec![d; 72 * QUADRANTS];
        entries[..4].copy_from_slice(&[0, t(1), d, 2]);
        entries[8..16].copy_from_slice(&[d, d, d, t(0), t(2), t(2), 1, 0]);
        entries[280..284].copy_from_slice(&[d, 3, d, t(3)]);
        let blocks = vec![[0u32; BLOCK_WORDS]; 4];
        let c = CompressedVisibility::from_entries(&entries, blocks.clone());
        assert_eq!(c.entries(), entries);
        assert_eq!((c.probe_count(), c.dead_count(), c.live.count()), (72, 68, 4));
        // Four blocks: 4-bit entries, `2 * block + transposed`, 15 for dead; four
        // distinct signatures, stored directly.
        assert_eq!(c.index.layout(), [0, 0, 4]);
        let stored: Vec<u32> = (0..16).map(|i| c.index.entries.get(i)).collect();
        assert_eq!(stored, [0, 3, 15, 4, 15, 15, 15, 1, 5, 5, 2, 0, 15, 6, 15, 7]);
        assert!(c.is_dead(1) && c.is_dead(69) && !c.is_dead(70) && c.is_dead(71));
        assert_eq!(c.entry(70, 3), BlockEntry::new(3, true));
        // Blocks without spread or clip texels: one group record, one mask, no bits
        // of mask number and 64 depth codes of 7 bits each; the group and mask
        // counts.
        let tables = 12 + 8 + 4 * 56 + 8;
        assert_eq!(c.bytes(), 12 * 2 + 8 + 4 + tables, "mask and ranks, entries, signature count, blocks");
        assert_eq!(c.check(), Ok(()));
        // Three blocks take 3-bit entries; an entry past four blocks is refused.
        let mut short = c.clone();
        short.blocks = BlockTable::pack(&blocks[..3]).0;
        assert!(short.check().unwrap_err().contains("16 entries in 4 bits"), "{:?}", short.check());
        let mut past = c.clone();
        let mut named = stored.clone();
        named[1] = 2 * 5 + 1;
        past.index.entries = PackedInts::new(&named, 4);
        assert!(past.check().unwrap_err().contains("entry 1 names block 5 of 4"), "{:?}", past.check());
        let mut lost = c.clone();
        lost.index.entries = PackedInts::new(&stored[..12], 4);
        assert!(lost.check().unwrap_err().contains("12 entries in 4 bits"), "{:?}", lost.check());
        let mut narrow = c.clone();
        narrow.index.entries = PackedInts::new(&stored.iter().map(|&v| v.min(7)).collect::<Vec<_>>(), 3);
        assert!(narrow.check().unwrap_err().contains("in 3 bits"), "{:?}", narrow.check());
        let mut numbered = c.clone();
        numbered.index.numbers = Some(PackedInts::new(&[0, 1, 2, 3], 2));
        assert_eq!(numbered.check(), Ok(()));
        numbered.index.numbers = Some(PackedInts::new(&[0, 1, 2], 2));
        assert!(numbered.check().unwrap_err().contains("3 2-bit numbers"), "{:?}", numbered.check());
        numbered.index.numbers = Some(PackedInts::new(&[0, 1, 2, 3], 3));
        assert!(numbered.check().is_err(), "3-bit numbers for four signatures");
        numbered.index.entries = PackedInts::new(&stored[..12], 4);
        numbered.index.numbers = Some(PackedInts::new(&[0, 1, 2, 3], 2));
        assert!(numbered.check().unwrap_err().contains("names signature 3 of 3"), "{:?}", numbered.check());
        let mut many = c.clone();
        many.blocks = BlockTable::pack(&vec![[0; BLOCK_WORDS]; 72 * QUADRANTS + 1]).0;
        assert!(many.check().unwrap_err().contains("289 blocks for 72 probes"), "{:?}", many.check());
        let none = CompressedVisibility::dead(100);
        assert_eq!((none.dead_count(), none.index.signature_count(), none.bytes()), (100, 0, 24 + 4 + 8));
        assert_eq!(none.decode(99), VisibilityMap::clipped());
        // Not baked: every probe live, seeing the clip value, in no index words.
        let unbaked = CompressedVisibility::unbaked(100);
        assert_eq!(unbaked.check(), Ok(()));
        assert_eq!((unbaked.dead_count(), unbaked.live.count(), unbaked.bytes()), (0, 100, 24 + 4 + 8));
        assert!((0..100).all(|p| !unbaked.is_dead(p) && unbaked.decode(p) == VisibilityMap::clipped()));
        assert_eq!(CompressedVisibility::from_entries(&unbaked.entries(), Vec::new()), none, "baked, all are dead");
    }

    /// More blocks than 16-bit numbers hold: 18-bit entries (twice the block and
    /// the transpose bit), and every probe still decodes to its map.
    #[test]
    fn a_dictionary_past_16_bit_block_numbers_decodes() {
        let mut seed = 13;
        let n = 0xFFFF / QUADRANTS + 8;
        // Random maps share no block; a short window keeps the search short.
        let maps: Vec<VisibilityMap> = (0..n)
            .map(|_| {
                VisibilityMap(std::array::from_fn(|_| {
                    let d = rng(&mut seed) * 0.9;
                    [d, d * d]
                }))
            })
            .collect();
        let params = CompressParams { window: 8, tolerance: 0.01 };
        let c = compress(&maps, &ProbeOrder::swizzled(n as u32, 256), &params);
        assert!(c.blocks.len() > 0xFFFF, "{} blocks", c.blocks.len());
        // Random maps share no signature: each live probe keeps its own.
        assert_eq!(c.index.layout(), [0, 0, 18]);
        assert_eq!(c.bytes(), c.live.bytes() + (n * QUADRANTS * 18).div_ceil(32) * 4 + 4 + c.blocks.bytes());
        for p in (0..n).step_by(97).chain([n - 1]) {
            let back = c.decode(p);
            for (got, want) in back.0.iter().zip(&maps[p].0) {
                assert!((got[0] - want[0]).abs() <= 0.01 && (got[1] - want[1]).abs() <= 0.01);
            }
        }
        // The same maps, fewer of them: 4,000 blocks, 13-bit entries.
        let few = compress(&maps[..1000], &ProbeOrder::swizzled(1000, 256), &params);
        assert_eq!((few.blocks.len(), few.index.layout()), (4000, [0, 0, 13]));
    }

    #[test]
    fn swizzled_order_visits_every_probe_once_in_spread_batches() {
        for (n, batch) in [(0, 8), (1, 8), (7, 8), (100, 8), (1000, 64), (1001, 64), (5, 1)] {
            let o = ProbeOrder::swizzled(n, batch);
            let mut seen = o.order.clone();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
            assert_eq!(*o.batches.last().unwrap(), n);
            let k = o.batch_count() as u32;
            for b in 0..o.batch_count() {
                let batch_probes = o.batch(b);
                assert!(batch_probes.len() as u32 <= batch.max(1));
                // Batch b holds b, b + K, ...: a probe's predecessor p - 1 is in
                // batch b - 1, already compressed.
                for (i, &p) in batch_probes.iter().enumerate() {
                    assert_eq!(p, b as u32 + i as u32 * k);
                }
            }
        }
    }
}
