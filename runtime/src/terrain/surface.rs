//! The chunks that may hold triangles (mixed masks, or edited since the last
//! regeneration), as a two-level bit set: a map from regions of 16^3 chunks to
//! 4,096-bit blocks, one bit per chunk.
//!
//! It exists for ray walks, which ask about a cell's 27 neighbours at once: a
//! neighbourhood touches at most eight regions (one for 5 cells in 8), so it costs a
//! map lookup or a few instead of two per neighbour. A region's block is dropped when
//! its last bit clears, so the set holds 512 bytes per region with surface.

use glam::IVec3;

use super::voxels::CoordMap;

/// Chunks per region edge, as a shift.
const REGION_SHIFT: i32 = 4;
const REGION_MASK: i32 = (1 << REGION_SHIFT) - 1;
const WORDS: usize = 1 << (3 * REGION_SHIFT - 6);

type Block = [u64; WORDS];

/// Every one of a cell's 27 neighbour bits.
#[cfg(test)]
const ALL_NEIGHBOURS: u32 = (1 << 27) - 1;

/// The region of chunk `c` and the chunk's bit in the region's block: x fastest, then
/// z, then y.
fn split(c: IVec3) -> (IVec3, usize) {
    let l = c & IVec3::splat(REGION_MASK);
    (c >> REGION_SHIFT, (l.x | (l.z | l.y << REGION_SHIFT) << REGION_SHIFT) as usize)
}

fn bit(block: &Block, index: usize) -> bool {
    block[index >> 6] >> (index & 63) & 1 != 0
}

/// See the module docs.
#[derive(Clone, Debug, Default)]
pub(crate) struct SurfaceChunks {
    regions: CoordMap<Box<Block>>,
}

impl SurfaceChunks {
    pub(crate) fn contains(&self, c: IVec3) -> bool {
        let (region, index) = split(c);
        self.regions.get(&region).is_some_and(|b| bit(b, index))
    }

    pub(crate) fn set(&mut self, c: IVec3, on: bool) {
        let (region, index) = split(c);
        let word = 1u64 << (index & 63);
        if on {
            self.regions.entry(region).or_insert_with(|| Box::new([0; WORDS]))[index >> 6] |= word;
        } else if let Some(block) = self.regions.get_mut(&region) {
            block[index >> 6] &= !word;
            if block.iter().all(|&w| w == 0) {
                self.regions.remove(&region);
            }
        }
    }

    /// Bit `(dx + 1) + 3 (dz + 1) + 9 (dy + 1)` set for every neighbour `cell + d`
    /// (`d` in `-1..=1` per axis, the cell itself included) in the set. (Walks use a
    /// [`Neighbourhood`], which keeps the region blocks from cell to cell.)
    #[cfg(test)]
    pub(crate) fn neighbours(&self, cell: IVec3) -> u32 {
        Neighbourhood::new(self).of(cell, ALL_NEIGHBOURS)
    }

    /// Bytes held (blocks and map slots), for memory figures.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.regions.capacity() * (std::mem::size_of::<(IVec3, Box<Block>)>() + 1)
            + self.regions.len() * std::mem::size_of::<Block>()
    }
}

/// [`SurfaceChunks::neighbours`] for a walk of neighbouring cells: it keeps the
/// blocks of the regions around the last cell asked about, so cells around which the
/// same regions lie (most of a ray's cells) cost no map lookups.
pub(crate) struct Neighbourhood<'s> {
    surface: &'s SurfaceChunks,
    /// The region range `(r0, r1)` of `blocks`, when they are loaded.
    range: Option<(IVec3, IVec3)>,
    /// The blocks of the one to eight regions, in slot `x + 2 z + 4 y` of their offset
    /// from `r0`.
    blocks: [Option<&'s Block>; 8],
}

impl<'s> Neighbourhood<'s> {
    pub(crate) fn new(surface: &'s SurfaceChunks) -> Neighbourhood<'s> {
        Neighbourhood { surface, range: None, blocks: [None; 8] }
    }

    /// As [`SurfaceChunks::neighbours`], for the neighbours in `wanted` (offset bits;
    /// the others come back clear): rows of three without a wanted bit are skipped.
    pub(crate) fn of(&mut self, cell: IVec3, wanted: u32) -> u32 {
        let (lo, hi) = (cell - IVec3::ONE, cell + IVec3::ONE);
        let (r0, r1) = (lo >> REGION_SHIFT, hi >> REGION_SHIFT);
        if self.range != Some((r0, r1)) {
            self.blocks = [None; 8];
            for y in r0.y..=r1.y {
                for z in r0.z..=r1.z {
                    for x in r0.x..=r1.x {
                        let r = IVec3::new(x, y, z);
                        let p = r - r0;
                        self.blocks[(p.x | p.z << 1 | p.y << 2) as usize] = self.surface.regions.get(&r).map(|b| &**b);
                    }
                }
            }
            self.range = Some((r0, r1));
        }
        let blocks = &self.blocks;
        if blocks.iter().all(Option::is_none) {
            return 0;
        }
        let mut out = 0;
        for dy in 0..3 {
            for dz in 0..3 {
                let shift = 3 * dz + 9 * dy;
                if wanted >> shift & 7 == 0 {
                    continue;
                }
                let first = IVec3::new(lo.x, lo.y + dy, lo.z + dz);
                let (region, index) = split(first);
                let p = region - r0;
                let slot = (p.z << 1 | p.y << 2) as usize;
                let row = if r0.x == r1.x {
                    // Three bits of one word: a row of 16 never straddles two.
                    blocks[slot].map_or(0, |b| (b[index >> 6] >> (index & 63)) as u32 & 7)
                } else {
                    (0..3).fold(0, |row, dx| {
                        let (region, index) = split(first + IVec3::X * dx);
                        let block = blocks[slot | (region.x - r0.x) as usize];
                        row | (block.is_some_and(|b| bit(b, index)) as u32) << dx
                    })
                };
                out |= row << shift;
            }
        }
        out & wanted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spatial::tests::Rng;

    #[test]
    fn neighbours_equal_one_lookup_per_chunk_across_region_borders() {
        let mut rng = Rng(7);
        let mut set = SurfaceChunks::default();
        let mut naive = std::collections::HashSet::new();
        let random =
            |rng: &mut Rng| IVec3::new(rng.below(80) as i32 - 40, rng.below(80) as i32 - 40, rng.below(80) as i32 - 40);
        for round in 0..4000 {
            let c = random(&mut rng);
            let on = round % 3 != 2;
            set.set(c, on);
            if on {
                naive.insert(c);
            } else {
                naive.remove(&c);
            }
            let cell = random(&mut rng);
            for probe in [cell, c] {
                let expected = (0..27)
                    .filter(|&b| naive.contains(&(probe + super::super::raycast::offset(b))))
                    .fold(0, |m, b| m | 1 << b);
                assert_eq!(set.neighbours(probe), expected, "cell {probe}");
                assert_eq!(set.contains(probe), naive.contains(&probe));
            }
        }
        // One neighbourhood walked along random paths of neighbouring cells (crossing
        // region borders, and into regions without blocks) answers as fresh queries.
        let mut hood = Neighbourhood::new(&set);
        let mut cell = IVec3::ZERO;
        for _ in 0..4000 {
            let step = IVec3::new(rng.below(3) as i32 - 1, rng.below(3) as i32 - 1, rng.below(3) as i32 - 1);
            cell = (cell + step).clamp(IVec3::splat(-60), IVec3::splat(60));
            let wanted = rng.below(1 << 27) as u32;
            assert_eq!(hood.of(cell, wanted), set.neighbours(cell) & wanted, "cell {cell}");
        }
        // Clearing every bit drops every block.
        for c in naive.drain() {
            set.set(c, false);
        }
        assert!(set.regions.is_empty());
    }
}
