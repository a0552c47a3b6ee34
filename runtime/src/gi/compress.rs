//! Lossy dictionary compression of visibility maps, the CPU reference of
//! `vulkan-shaders/gi_compress.comp`.
//!
//! Following the reference notes (`shared/reference/001_9e5c8190d77d0949.txt`,
//! "Dictionary Compression"): maps are visited in a given order; each is compared
//! with the blocks already stored within a look-back window (10,000 blocks) and
//! reuses the most recent one whose largest texel difference, in either channel, is
//! at most the tolerance (0.01 of the clip range: maps are normalised, so the
//! tolerance is absolute); otherwise it is stored as a new block of 256 half-float
//! pairs (1 KiB). A map within tolerance of the all-clip map is a dead probe: it
//! stores nothing and decodes to the clip value.
//!
//! # Symmetries
//!
//! Beyond the reference, a map may also reuse a block read through one of the eight
//! symmetries of the square ([`symmetric_texel`]): with the octahedral poles on the
//! vertical, those are the quarter turns about the vertical and the mirrors in
//! vertical planes, so the corner of a building seen from the north-east and from
//! the south-west, or a slope facing east and one facing north, share one block.
//! The probe's entry in `block_index` carries the symmetry in its top three bits
//! ([`BlockEntry`]); decoding reads texel `(x, y)` of the map from texel
//! `symmetric_texel(s, x, y)` of the block, still one lookup. Each block of the
//! window is tried under symmetry 0 (as is) first, then 1 to 7; the newest block
//! that matches under any of them wins, with its first matching symmetry. On the
//! 48 m town at 0.5 m spacing this stores 3,416 blocks where plain matching
//! stores 5,639 (sequential order; `cargo bench -p kiln-benches --bench ddgi`).
//! A second prefilter, the mean of the central 8 x 8 texels (which every symmetry
//! keeps in place), brings the compression time back to what one-way matching
//! took.
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

#[cfg(doc)]
use super::octahedral::symmetric_texel;
use super::octahedral::{VisibilityMap, OCT_TEXELS, SYMMETRIC_TEXELS};
use super::pack::{half_from_f32, half_to_f32};

/// `block_index` of a dead probe: no block, every texel is the clip value.
pub const DEAD_PROBE: u32 = u32::MAX;

/// A probe's `block_index` entry: its block in the low 29 bits, the symmetry it
/// reads the block through (see the module docs) in the top 3, or [`DEAD_PROBE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockEntry(pub u32);

impl BlockEntry {
    /// Bits of the block number.
    pub const BLOCK_BITS: u32 = 29;
    /// Blocks a dictionary may hold: every block number but the one [`DEAD_PROBE`]
    /// spells.
    pub const MAX_BLOCKS: usize = (1 << Self::BLOCK_BITS) - 1;

    pub fn new(block: u32, symmetry: u32) -> BlockEntry {
        debug_assert!((block as usize) < Self::MAX_BLOCKS && symmetry < 8);
        BlockEntry(block | symmetry << Self::BLOCK_BITS)
    }

    pub fn is_dead(self) -> bool {
        self.0 == DEAD_PROBE
    }

    pub fn block(self) -> u32 {
        self.0 & ((1 << Self::BLOCK_BITS) - 1)
    }

    pub fn symmetry(self) -> u32 {
        self.0 >> Self::BLOCK_BITS
    }
}

/// Compression settings; [`CompressParams::default`] is the reference's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompressParams {
    /// Blocks searched back from the newest (10,000).
    pub window: u32,
    /// Largest accepted texel difference, as a fraction of the clip range (0.01).
    pub tolerance: f32,
}

impl Default for CompressParams {
    fn default() -> CompressParams {
        CompressParams { window: 10_000, tolerance: 0.01 }
    }
}

/// A stored block: per texel `depth | depth^2 << 16` as half floats (R16G16).
pub type Block = [u32; OCT_TEXELS];

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

/// Compressed visibility of a set of probes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompressedVisibility {
    /// Per probe: its block and symmetry ([`BlockEntry`]), or [`DEAD_PROBE`].
    pub block_index: Vec<u32>,
    /// The dictionary.
    pub blocks: Vec<Block>,
}

impl CompressedVisibility {
    /// Probe `p`'s texel `t` as `[depth, depth^2]` over the clip distance.
    #[inline]
    pub fn texel(&self, p: usize, t: usize) -> [f32; 2] {
        let entry = BlockEntry(self.block_index[p]);
        if entry.is_dead() {
            return [1.0, 1.0];
        }
        let source = SYMMETRIC_TEXELS[entry.symmetry() as usize][t];
        unpack_texel(self.blocks[entry.block() as usize][source as usize])
    }

    pub fn decode(&self, p: usize) -> VisibilityMap {
        VisibilityMap(std::array::from_fn(|t| self.texel(p, t)))
    }

    pub fn dead_count(&self) -> usize {
        self.block_index.iter().filter(|&&b| b == DEAD_PROBE).count()
    }

    /// Bytes stored: a 4-byte index per probe plus 1 KiB per block.
    pub fn bytes(&self) -> usize {
        self.block_index.len() * 4 + self.blocks.len() * std::mem::size_of::<Block>()
    }
}

#[inline]
pub fn pack_texel([d, d2]: [f32; 2]) -> u32 {
    half_from_f32(d) | (half_from_f32(d2) << 16)
}

#[inline]
pub fn unpack_texel(t: u32) -> [f32; 2] {
    [half_to_f32(t & 0xFFFF), half_to_f32(t >> 16)]
}

/// Largest texel difference of `map` to `block` read through `symmetry` is at most
/// `tolerance`.
fn matches(map: &VisibilityMap, block: &Block, symmetry: usize, tolerance: f32) -> bool {
    map.0.iter().zip(&SYMMETRIC_TEXELS[symmetry]).all(|(m, &source)| {
        let b = unpack_texel(block[source as usize]);
        (m[0] - b[0]).abs() <= tolerance && (m[1] - b[1]).abs() <= tolerance
    })
}

fn is_dead(map: &VisibilityMap, tolerance: f32) -> bool {
    map.0.iter().all(|m| (m[0] - 1.0).abs() <= tolerance && (m[1] - 1.0).abs() <= tolerance)
}

fn mean_depth(values: impl Iterator<Item = f32>) -> f32 {
    values.sum::<f32>() / OCT_TEXELS as f32
}

/// Mean depths a symmetry of the square leaves unchanged: of the whole map, and of
/// its central 8 x 8 texels (the directions around +y). A match differs from the
/// block by at most the tolerance in every texel, hence in both means.
fn invariant_means(depth: impl Fn(usize) -> f32) -> [f32; 2] {
    let all = mean_depth((0..OCT_TEXELS).map(&depth));
    let inner = (4..12).flat_map(|y| (4..12).map(move |x| y * 16 + x)).map(&depth).sum::<f32>() / 64.0;
    [all, inner]
}

/// Slack on the mean-depth prefilter, so float summation order never makes it
/// reject a true match (the full comparison alone decides).
const MEAN_SLACK: f32 = 1e-4;

/// Compresses `maps` (one per probe) in `order` (see the module docs).
pub fn compress(maps: &[VisibilityMap], order: &ProbeOrder, params: &CompressParams) -> CompressedVisibility {
    assert_eq!(order.order.len(), maps.len(), "the order must visit every map once");
    let mut out = CompressedVisibility { block_index: vec![DEAD_PROBE; maps.len()], blocks: Vec::new() };
    // Mean depths of each stored block: |mean(a) - mean(b)| <= max |a - b|, so a
    // block whose means are further than the tolerance cannot match.
    let mut means: Vec<[f32; 2]> = Vec::new();
    let mut fresh: Vec<u32> = Vec::new();
    for b in 0..order.batch_count() {
        let len = out.blocks.len();
        let window_start = len.saturating_sub(params.window as usize);
        fresh.clear();
        for &p in order.batch(b) {
            let map = &maps[p as usize];
            if is_dead(map, params.tolerance) {
                continue;
            }
            let mean = invariant_means(|t| map.0[t][0]);
            let far = |a: f32, b: f32| (a - b).abs() > params.tolerance + MEAN_SLACK;
            let found = (window_start..len).rev().find_map(|j| {
                if far(means[j][0], mean[0]) || far(means[j][1], mean[1]) {
                    return None;
                }
                (0..8).find(|&s| matches(map, &out.blocks[j], s, params.tolerance)).map(|s| (j, s))
            });
            match found {
                Some((j, s)) => out.block_index[p as usize] = BlockEntry::new(j as u32, s as u32).0,
                None => fresh.push(p),
            }
        }
        assert!(
            out.blocks.len() + fresh.len() <= BlockEntry::MAX_BLOCKS,
            "more than {} visibility blocks",
            BlockEntry::MAX_BLOCKS
        );
        for &p in &fresh {
            let block: Block = std::array::from_fn(|t| pack_texel(maps[p as usize].0[t]));
            means.push(invariant_means(|t| unpack_texel(block[t])[0]));
            out.block_index[p as usize] = out.blocks.len() as u32;
            out.blocks.push(block);
        }
    }
    out
}

#[cfg(test)]
mod tests {
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
                    let mut m = protos[(rng(seed) * 6.0) as usize % 6].clone();
                    for t in m.0.iter_mut() {
                        let e = (rng(seed) - 0.5) * 0.008;
                        *t = [(t[0] + e).clamp(0.0, 1.0), (t[1] + e).clamp(0.0, 1.0)];
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
            assert!(c.blocks.len() < maps.len() / 2, "{} blocks", c.blocks.len());
            assert!(c.dead_count() >= 800, "{} dead", c.dead_count());
            for (p, map) in maps.iter().enumerate() {
                let back = c.decode(p);
                for t in 0..OCT_TEXELS {
                    for ch in 0..2 {
                        assert!((back.0[t][ch] - map.0[t][ch]).abs() <= params.tolerance);
                    }
                }
                if c.block_index[p] == DEAD_PROBE {
                    assert_eq!(back, VisibilityMap::clipped());
                }
            }
        }
    }

    /// A map read through each symmetry of the square shares the first one's block,
    /// and every probe decodes to its own map.
    #[test]
    fn symmetric_maps_share_one_block() {
        let mut seed = 11;
        let mut base = VisibilityMap::clipped();
        for t in base.0.iter_mut() {
            let d = rng(&mut seed);
            *t = [d, d * d];
        }
        let turned: Vec<VisibilityMap> =
            (0..8).map(|s| VisibilityMap(std::array::from_fn(|t| base.0[SYMMETRIC_TEXELS[s][t] as usize]))).collect();
        let c = compress(&turned, &ProbeOrder::linear(8, 1), &CompressParams::default());
        assert_eq!(c.blocks.len(), 1);
        for (s, map) in turned.iter().enumerate() {
            let entry = BlockEntry(c.block_index[s]);
            assert_eq!((entry.block(), entry.symmetry()), (0, s as u32));
            let decoded = c.decode(s);
            for (got, want) in decoded.0.iter().zip(&map.0) {
                assert!((got[0] - want[0]).abs() <= 1e-3 && (got[1] - want[1]).abs() <= 1e-3);
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
        // The first map again at the end: 20 blocks back.
        distinct.push(distinct[0].clone());
        let n = distinct.len() as u32;
        let wide = compress(&distinct, &ProbeOrder::linear(n, 1), &CompressParams { window: 20, tolerance: 0.01 });
        assert_eq!(wide.block_index[20], 0);
        assert_eq!(wide.blocks.len(), 20);
        let narrow = compress(&distinct, &ProbeOrder::linear(n, 1), &CompressParams { window: 19, tolerance: 0.01 });
        assert_eq!(narrow.block_index[20], 20);
        assert_eq!(narrow.blocks.len(), 21);
    }

    #[test]
    fn maps_of_one_batch_cannot_share_a_block() {
        let mut m = VisibilityMap::clipped();
        m.0[0] = [0.5, 0.25];
        let maps = vec![m.clone(), m.clone(), m];
        assert_eq!(compress(&maps, &ProbeOrder::linear(3, 1), &CompressParams::default()).blocks.len(), 1);
        let one_batch = compress(&maps, &ProbeOrder::linear(3, 3), &CompressParams::default());
        assert_eq!(one_batch.blocks.len(), 3);
        assert_eq!(one_batch.block_index, vec![0, 1, 2]);
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
