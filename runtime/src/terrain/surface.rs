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
pub(crate) const REGION_SHIFT: i32 = 4;
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

    /// Whether any chunk of region `region` (chunks `16 region` to `16 region + 15`
    /// on each axis) is in the set: whether the region has a block.
    pub(crate) fn any_in_region(&self, region: IVec3) -> bool {
        self.regions.contains_key(&region)
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

/// A block without bits: what a [`Neighbourhood`] reads for a region without surface.
static EMPTY: Block = [0; WORDS];

/// [`SurfaceChunks::neighbours`] for a walk of neighbouring cells: it keeps the
/// blocks of a window of 2 x 2 x 2 regions, loaded as cells need them, so a ray's
/// cells cost no map lookups once their regions are loaded, and a cell whose
/// neighbours straddle regions (every cell at `y = 0` of a terrain whose ground is
/// there) costs what any other does: a few instructions per row of three wanted.
/// (On the `kdtree` bench's chunk-set rays, whose ground is at `y = 0`, a cast ran
/// 7,500 -> 7,200 instructions, callgrind; the time moved within the host's noise,
/// 1.06-1.09 -> 1.03-1.06 µs per ray.)
pub(crate) struct Neighbourhood<'s> {
    surface: &'s SurfaceChunks,
    /// The low corner of the window: `blocks[x + 2 z + 4 y]` is region `window +
    /// (x, y, z)`'s block (or [`EMPTY`]) where bit `x + 2 z + 4 y` of `loaded` is set.
    window: IVec3,
    loaded: u8,
    /// The loaded slots whose region has a block.
    found: u8,
    blocks: [&'s Block; 8],
}

/// Bit `x + 2 z + 4 y` for every `(x, y, z)` of `lo ..= hi` (each 0 or 1).
fn slots(lo: IVec3, hi: IVec3) -> u8 {
    let span = |a: i32, b: i32| (2u8 << b) - (1u8 << a);
    let (x, y, z) = (span(lo.x, hi.x), span(lo.y, hi.y), span(lo.z, hi.z));
    let zs = (z & 1) | (z & 2) << 1;
    let xz = x * zs;
    (if y & 1 != 0 { xz } else { 0 }) | (if y & 2 != 0 { xz << 4 } else { 0 })
}

impl<'s> Neighbourhood<'s> {
    pub(crate) fn new(surface: &'s SurfaceChunks) -> Neighbourhood<'s> {
        Neighbourhood { surface, window: IVec3::ZERO, loaded: 0, found: 0, blocks: [&EMPTY; 8] }
    }

    /// As [`SurfaceChunks::neighbours`], for the neighbours in `wanted` (offset bits;
    /// the others come back clear): rows of three without a wanted bit are skipped.
    pub(crate) fn of(&mut self, cell: IVec3, wanted: u32) -> u32 {
        let lo = cell - IVec3::ONE;
        let (r0, r1) = (lo >> REGION_SHIFT, (cell + IVec3::ONE) >> REGION_SHIFT);
        if (r0 - self.window).min_element() < 0 || (r1 - self.window).max_element() > 1 {
            // A new window around the cell's regions. On an axis where they are one
            // region, the window reaches towards the nearer side of it, where the
            // walk is more likely to straddle next.
            let low_half = (cell & IVec3::splat(REGION_MASK)).cmplt(IVec3::splat(1 << (REGION_SHIFT - 1)));
            let single = r0.cmpeq(r1);
            self.window = r0 - IVec3::select(single & low_half, IVec3::ONE, IVec3::ZERO);
            self.loaded = 0;
            self.found = 0;
            self.blocks = [&EMPTY; 8];
        }
        let (p0, p1) = (r0 - self.window, r1 - self.window);
        let need = slots(p0, p1);
        let mut missing = need & !self.loaded;
        while missing != 0 {
            let slot = missing.trailing_zeros() as i32;
            missing &= missing - 1;
            let region = self.window + IVec3::new(slot & 1, slot >> 2, slot >> 1 & 1);
            if let Some(block) = self.surface.regions.get(&region) {
                self.blocks[slot as usize] = block;
                self.found |= 1 << slot;
            }
            self.loaded |= 1 << slot;
        }
        if need & self.found == 0 {
            return 0;
        }
        // Row `(dy, dz)` is 16 bits of its region's block, and 16 more of the next
        // region's along x where the three cells straddle it (where they do not,
        // the second half is not read, whatever block stands in that slot).
        let lx = (lo.x & REGION_MASK) as u32;
        let sx = p0.x as usize;
        // Per offset on y and on z: the slot bits and the row's first bit in a block.
        let place = |c: i32, window: i32, slot_shift: u32, bit_shift: i32| {
            [0, 1, 2].map(|d| {
                let c = c + d;
                (((c >> REGION_SHIFT) - window) << slot_shift | (c & REGION_MASK) << bit_shift) as usize
            })
        };
        let ys = place(lo.y, self.window.y, 2, 2 * REGION_SHIFT);
        let zs = place(lo.z, self.window.z, 1, REGION_SHIFT);
        let mut out = 0;
        let mut rows = wanted;
        while rows != 0 {
            let row = rows.trailing_zeros() / 3;
            rows &= !(7 << (3 * row));
            let (dy, dz) = ((row / 3) as usize, (row % 3) as usize);
            let packed = ys[dy] | zs[dz];
            let (slot, first) = (packed & 7, packed & !7);
            let (word, bit) = (first >> 6, first & 63);
            let near = self.blocks[slot | sx][word] >> bit & 0xffff;
            let far = self.blocks[slot | (sx ^ 1)][word] >> bit & 0xffff;
            out |= (((near | far << 16) >> lx & 7) as u32) << (3 * row);
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
        // And asked about cells anywhere, as a batch's walks ask in turn.
        for _ in 0..4000 {
            let cell = random(&mut rng) + IVec3::splat(rng.below(3) as i32 - 1);
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
